"""Pure domain types: ids, arguments, descriptors, results, errors. No I/O here."""
