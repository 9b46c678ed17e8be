"""The toolkit as users install it: a wheel, outside the repository, from any directory."""
