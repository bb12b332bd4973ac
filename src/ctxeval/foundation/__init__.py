"""The foundation every stage stands on: errors, the spec grammar, optional imports, array types, exact sums, progress."""
