//! A throwaway PostgreSQL 15 cluster for `cargo xtask test` (the server suite and the
//! crash tests on Postgres) and `cargo xtask bench` (the sustained-load row): started in
//! a temporary folder on a free loopback port, stopped and removed afterwards.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::run_command;

/// The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl`.
pub(crate) fn postgres_bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A throwaway cluster in a temporary folder, listening on 127.0.0.1 only.
pub(crate) struct PostgresCluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres_user: bool,
}

impl PostgresCluster {
    pub(crate) fn start(bin: &Path) -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("no free port for PostgreSQL: {e}"))?;
        let dir = std::env::temp_dir().join(format!("gatehouse-pg-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {dir:?}: {e}"))?;
        // initdb refuses to run as root: run the cluster as the `postgres` user then.
        let as_postgres_user = is_root();
        if as_postgres_user {
            run_command(Command::new("chown").arg("postgres:postgres").arg(&dir))?;
        }
        let cluster = Self {
            bin: bin.to_path_buf(),
            dir,
            port,
            as_postgres_user,
        };
        let data = cluster.dir.join("data");
        let log = cluster.dir.join("server.log");
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=200",
            cluster.dir.display()
        );
        let started = run_command(
            cluster
                .pg("initdb")
                .args([
                    "-A",
                    "trust",
                    "-U",
                    "gatehouse",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data),
        )
        .and_then(|()| {
            run_command(
                cluster
                    .pg("pg_ctl")
                    .arg("-D")
                    .arg(&data)
                    .arg("-l")
                    .arg(&log)
                    .args(["-o", &options, "-w", "-t", "60", "start"]),
            )
        });
        if let Err(e) = started {
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            cluster.stop();
            return Err(format!("{e}\n{log_text}"));
        }
        Ok(cluster)
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://gatehouse@127.0.0.1:{}/postgres", self.port)
    }

    fn pg(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres_user {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    pub(crate) fn stop(self) {
        let data = self.dir.join("data");
        if data.exists() {
            let _ = self
                .pg("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-m", "fast", "-w", "stop"])
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}
