"""Isaac Sim as the third world: bridge configuration and scene script (runs inside Isaac Sim only)."""
