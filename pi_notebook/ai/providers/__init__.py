"""Wire-API providers. Each API has a stream module exporting ``stream`` and ``stream_simple``
(built from :class:`._base.Provider`, the skeleton they share), a ``*_request`` module building
its request and a ``*_options`` module holding its options type. The registry imports a stream
module the first time a model of its API streams."""
