"""Wire-API adapters. Each module exports ``stream`` and ``stream_simple`` and is imported
lazily by the registry the first time a model of its API streams."""
