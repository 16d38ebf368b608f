"""Indices of a version: building scalar indices, listing and committing them,
``optimize_indices``, prewarming, index configs and full-text query objects."""
