"""The wizard's pages, one module each (thin: collect settings, start a task, render)."""
