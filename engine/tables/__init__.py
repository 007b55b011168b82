"""Tables: reading a local file (``read``: dispatch; ``read_text``, ``read_excel``,
``read_binary``; ``names``), column kinds (``schema``: whole table and user choices; ``kinds``,
``identifiers``, ``roles``, ``values``), the numeric encoding the flow trains on (``encoder``) and
atomic writing in the user's format (``write``: escaping, CSV/Excel, dispatch; ``atomic``,
``write_formats``, ``readme``)."""
