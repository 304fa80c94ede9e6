"""Shared foundation of rayweave: settings, domain types, errors, Ray runtime, services and CLI."""

__version__ = "0.1.0"
