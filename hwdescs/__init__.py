"""Bundled hardware descriptions (package data) and their performance feedback functions."""
