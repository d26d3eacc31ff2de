"""Posterior engines on fixed-capacity buffers: exact GP (reference) and Nyström / DTC."""
