"""Files: reading a local table (``read``: dispatch; ``read_text``, ``read_excel``,
``read_binary``; ``names`` for headers, ``values`` for cell helpers) and writing in the user's
format, atomically (``write``: escaping, dispatch; ``atomic``, ``write_formats``, ``readme``).
Knows bytes and cells, nothing of what a column means."""
