"""What decisions read, kept current from committed events: projections, the store, the feed."""
