"""The report's sections, one module each, in the order they are printed: :mod:`.summary`
(page 1), :mod:`.data`, :mod:`.privacy`, :mod:`.utility`, :mod:`.copies`, :mod:`.method`,
:mod:`.dp`. Each builder takes the :class:`~engine.pipeline.results.RunResult`, the paragraph
styles and the frame width and returns flowables; :func:`engine.report.layout.guarded` turns a
failure into a sentence.

References: docs/architecture.md; docs/method.md sections 5, 6 and 10.
"""
