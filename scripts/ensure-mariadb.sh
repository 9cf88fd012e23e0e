#!/usr/bin/env bash
# Makes sure a MySQL/MariaDB server answers on 127.0.0.1:3306 as root without a password (what
# the DBBench tests use): starts the machine's MariaDB if it is installed but stopped, installs
# it from Debian's packages if it is missing.
set -euo pipefail
ping_db() { mariadb-admin --protocol=tcp -h127.0.0.1 -P3306 -uroot ping >/dev/null 2>&1 || mysqladmin --protocol=tcp -h127.0.0.1 -P3306 -uroot ping >/dev/null 2>&1; }
if ping_db; then echo "MariaDB is up on 127.0.0.1:3306"; exit 0; fi
if ! command -v mariadbd >/dev/null 2>&1 && ! [ -x /usr/sbin/mariadbd ]; then
  echo "MariaDB not installed: installing mariadb-server"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server
fi
echo "starting MariaDB"
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql || (/usr/sbin/mariadbd --user=mysql >/tmp/mariadbd.log 2>&1 &)
for _ in $(seq 1 60); do
  if ping_db; then echo "MariaDB is up"; exit 0; fi
  sleep 1
done
echo "MariaDB did not come up on 127.0.0.1:3306" >&2
exit 1
