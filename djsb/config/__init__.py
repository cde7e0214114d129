"""Configuration of ``djsb run``: the experiment file read into typed, validated sections.

:mod:`djsb.config.experiment` reads it (every error names the file, line and key path); the
values inside it (numbers, sizes, times, choices, paths) are read by the readers of
:mod:`djsb.yamlnodes` that every command shares, and ``djsb validate`` (:mod:`djsb.validate`)
tells which kind of config a file is and checks it with that kind's reader.
"""

from djsb.config.experiment import (
    DEFAULT_COMMAND,
    SSH_TRANSPORTS,
    AppConfig,
    Config,
    GeneralConfig,
    JobModuleConfig,
    OutputConfig,
    SSHConfig,
    check_node_capacity,
    config_from_tree,
    load_config,
    open_module,
    read_ssh,
)

__all__ = ["DEFAULT_COMMAND", "SSH_TRANSPORTS", "AppConfig", "Config", "GeneralConfig",
           "JobModuleConfig", "OutputConfig", "SSHConfig", "check_node_capacity", "config_from_tree",
           "load_config", "open_module", "read_ssh"]
