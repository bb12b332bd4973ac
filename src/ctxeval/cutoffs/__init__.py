"""Cut-offs: what a cut-off is (a count, a budget, the whole list) and what a budget takes
from a ranked list."""
