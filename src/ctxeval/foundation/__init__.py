"""The foundation every stage stands on: errors, the spec grammar, parameter checks,
optional imports, array types, exact sums, progress."""
