"""Public proof documents: every field listed by hand, no database row ever served."""
