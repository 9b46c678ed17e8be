"""Tests of the one WebApp spec: loading, conversions and the generated values schema."""
