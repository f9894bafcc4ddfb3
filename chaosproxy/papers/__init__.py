"""The three papers' experiments: their designs as grid blocks and their tables.

`designs.DESIGNS` names each design; each paper's module turns a scored run directory into
tables with the paper's rows and columns (`table.Table`), printed, and written as Markdown
and CSV by `chaosproxy reproduce`.
"""
