"""ROUGE-L matching: the strategies, the compiled kernel, and continuous-eval's ROUGE."""
