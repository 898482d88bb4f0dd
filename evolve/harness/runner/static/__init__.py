"""The static check (check.py), run in a jailed child (harness/runner/jailed_child.py): resolving the names a
candidate writes imports the library modules it names. flow.py is its reading of what each name may refer to."""
