"""Lets the test modules here import the shared cross-backend harness by name."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
