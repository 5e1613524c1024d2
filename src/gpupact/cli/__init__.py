"""Thin Typer commands: parse, call one function, render."""
