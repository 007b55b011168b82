"""Columns: deciding what each column is and what the user chose (``schema``: the whole table
and the user's choices; ``kinds``, ``codes`` (coded categories), ``identifiers``, ``dates``,
``roles`` + ``survival_names`` (time and event), ``keys`` (quasi-identifiers for the disclosure
measures)). Reads files through :mod:`engine.files`; knows nothing of the model's encoding."""
