"""Writing data: the inputs pylance's writers accept as record batches, and data files
and fragments written from them (not committed: a job or the facade commits)."""
