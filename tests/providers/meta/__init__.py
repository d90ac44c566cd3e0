"""The shared Meta core: errors, usage pauses, signed requests, the Graph stand-in base."""
