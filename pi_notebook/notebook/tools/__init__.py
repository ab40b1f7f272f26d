"""The notebook tools (``notebook_tools``) and what they read: ``cells`` (cell sources, the
saved notebook), ``cell_log`` (the outputs and errors of cells as they run), ``outputs``
(display bundles and figures as text and images), ``references`` (bounded, secret-safe
summaries of values) and ``summaries/`` (summaries of pandas, numpy, polars, pyarrow,
torch, xarray, DuckDB, dask and Spark values, one module a library)."""
