//! The mobile library links no OpenSSL: TLS is rustls (ring + webpki roots) only.
//!
//! Asked of cargo's resolved dependency graph for gatehouse-ffi (normal and build edges,
//! all targets), so it holds for every platform the library is built for. The built
//! artifact itself is checked by `bindings/check-mobile-lib.sh` (ldd, nm, size).

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// `cargo tree -p gatehouse-ffi -e normal,build -i <package>`: Ok(tree) when the package is
/// in the graph, Err(message) when cargo says it is not.
fn inverted_tree(package: &str) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "-p",
            "gatehouse-ffi",
            "-e",
            "normal,build",
            "--target",
            "all",
            "-i",
            package,
        ])
        .output()
        .expect("cargo tree runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.success() && !stdout.trim().is_empty() {
        Ok(stdout)
    } else {
        Err(stderr)
    }
}

#[test]
fn no_openssl_or_native_tls_in_the_dependency_graph() {
    for package in ["openssl-sys", "openssl", "native-tls", "openssl-src"] {
        match inverted_tree(package) {
            Ok(tree) => panic!("gatehouse-ffi depends on {package}:\n{tree}"),
            Err(message) => assert!(
                message.contains("did not match any packages"),
                "cargo tree failed for another reason than an absent {package}: {message}"
            ),
        }
    }
}

#[test]
fn tls_is_rustls() {
    // The positive control: the same query finds rustls, so an empty answer above means
    // "absent", not "the query is broken".
    let tree = inverted_tree("rustls").expect("gatehouse-ffi uses rustls");
    assert!(tree.contains("gatehouse-ffi"), "{tree}");
    assert!(tree.contains("reqwest"), "{tree}");
}
