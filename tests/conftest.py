"""Test configuration: float64 everywhere (DESIGN §4), set here and not on import."""
import jax

jax.config.update("jax_enable_x64", True)
