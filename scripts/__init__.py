"""Developer and deployment scripts; a package so tests can import the shared ones."""
