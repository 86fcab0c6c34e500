"""A result table: Arrow C stream export, ``to_pandas()``, ``to_polars()``, no hard dependency."""


class Table:
    """Columns of equal length (``column_names``), readable as Arrow (``__arrow_c_stream__``, so
    ``pyarrow.table(t)``, ``polars.DataFrame(t)`` and duckdb take it directly), as pandas or
    polars frames, or as a dict of lists."""

    def __init__(self, native):
        self._native = native

    @property
    def column_names(self):
        return list(self._native.column_names)

    def __len__(self):
        return len(self._native)

    def __arrow_c_stream__(self, requested_schema=None):
        return self._native.__arrow_c_stream__(requested_schema)

    def to_pydict(self):
        """Every column as a list, by name (None for a missing value)."""
        return self._native.to_pydict()

    def to_pylist(self):
        """One dict per row."""
        columns = self.to_pydict()
        names = list(columns)
        return [dict(zip(names, row)) for row in zip(*(columns[n] for n in names))]

    def to_pandas(self):
        """The table as a pandas DataFrame (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError(
                "to_pandas() needs pandas: install it with `pip install pandas` "
                "(or use to_polars(), to_pydict(), or pyarrow.table(t))"
            ) from None
        return pandas.DataFrame(self.to_pydict(), columns=self.column_names)

    def to_polars(self):
        """The table as a polars DataFrame (needs polars)."""
        try:
            import polars
        except ImportError:
            raise ImportError(
                "to_polars() needs polars: install it with `pip install polars` "
                "(or use to_pandas(), to_pydict(), or pyarrow.table(t))"
            ) from None
        return polars.DataFrame(self.to_pydict())

    def __repr__(self):
        return f"<retrystorm.Table: {len(self)} rows; columns {', '.join(self.column_names)}>"
