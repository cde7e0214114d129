"""Remote login nodes: host aliases as OpenSSH reads them, the paramiko and OpenSSH transports,
reconnection after a dropped connection, and staging the apps on the remote host."""
