"""Parallel execution: worker processes on this machine, partitions read where they live, Dask."""
