"""Encoding: rows to the numbers the flow trains on and back (``encoder`` + ``marginals``
(normal scores), ``dequantize``, ``frequencies``, ``restore``, ``missing`` (indicators),
``nominal`` (one 0/1 column per level), ``layered`` (the pipeline's encoder around them)).
Built from a :mod:`engine.columns` schema."""
