"""Tables: reading a local file (text and binary formats), column kinds (schema), the numeric
encoding the flow trains on (encoder) and atomic writing in the user's format (write)."""
