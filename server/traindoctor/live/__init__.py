"""Live diagnosis: drive debugpy over DAP, stop at the failure, probe, explain."""
