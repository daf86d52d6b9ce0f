"""Reading a user's configuration files: one reader for TOML campaign files and YAML methods configs (and the YAML
of the datasets failforge imports), with every problem a one-line error and YAML aliases bounded."""

from failforge.configfile._reader import Format, check_regular_file, read_config_data
from failforge.configfile._validate import validate_config
from failforge.configfile._yaml import MAX_NODES, BoundedSafeLoader, YamlTooLarge, expanded_size, safe_load

__all__ = [
    "MAX_NODES",
    "BoundedSafeLoader",
    "Format",
    "YamlTooLarge",
    "check_regular_file",
    "expanded_size",
    "read_config_data",
    "safe_load",
    "validate_config",
]
