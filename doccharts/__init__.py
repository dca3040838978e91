"""Charts for the documentation, drawn as plain SVG by our own code.

The benchmark report (``bench``) and the fidelity report (``differential``) both turn tables of
figures into pictures in ``docs/images/``. The drawing lives here, apart from either, so that
neither package imports the other and the files come out alike: self-contained SVG with no
script, font or stylesheet from elsewhere, readable in a browser and on GitHub.
"""
