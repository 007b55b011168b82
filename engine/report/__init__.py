"""The PDF report: layout primitives (layout), the document (build), its pages and sections
(pages, dp, copies), figures (figures, forest), numbers as shown (data) and wording (wording)."""
