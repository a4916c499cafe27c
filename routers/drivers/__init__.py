"""Router drivers, one module per platform, and the dispatch map from platform name to class."""
