"""memorylab's bundled data, installed as the package ``memorylab._data`` (pyproject.toml maps it
onto this folder of the repository) so that a wheel carries it; memorylab finds it with
``importlib.resources`` (:func:`memorylab.transcripts.bundled_data_dir`). The files are generated
by ``make_data.py`` from ``domains/*.toml``: see README.md."""
