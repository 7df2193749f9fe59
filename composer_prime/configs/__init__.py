"""Every TOML/CLI config model, one module per command or part, importable without torch.

`rl --help` and a config check load only pydantic: a module here imports nothing but other config
modules and light helpers, never the code that runs (tests/test_config_imports.py walks the imports).
"""
