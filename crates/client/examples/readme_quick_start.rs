//! The README's Rust quick start, exactly as printed there below this header (a test,
//! crates/client/tests/readme_quick_start.rs, compares them).

// An example binary: it prints what it does.
#![allow(clippy::print_stdout)]
use gatehouse_client::{Answer, Client, Error};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::builder("http://127.0.0.1:8787")
        .api_key("gatehouse-dev")
        .project_id("019fac94-0000-7000-8000-000000000000")
        .build()?;
    for gate in client.interactions().list_pending(None).await? {
        let id = gate.id.clone().unwrap_or_default();
        match client.interactions().respond(&id, &Answer::approve()).await {
            Ok(row) => println!("answered {id}: {:?}", row.status),
            Err(Error::AlreadyAnswered { .. }) => println!("{id}: another device answered first"),
            Err(other) => return Err(other.into()),
        }
    }
    Ok(())
}
