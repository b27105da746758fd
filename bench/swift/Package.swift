// swift-tools-version:6.0
// The Swift side of BENCHMARKS.md row 6: one respond through the Swift binding, timed call
// by call, against the gates `gatehouse-bench live` created (run by `cargo xtask bench`).
// It depends on the Gatehouse package at the repository root by path, so it links the
// same native library (GATEHOUSE_FFI_LIB_DIR: the bench passes the release build's folder).
import Foundation
import PackageDescription

let repository = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "GatehouseBench",
    platforms: [.macOS(.v12)],
    dependencies: [.package(path: repository.path)],
    targets: [
        .executableTarget(
            name: "RespondCostBench",
            // A path dependency's identity is its folder's name (the checkout's).
            dependencies: [.product(name: "Gatehouse", package: repository.lastPathComponent)],
            path: "Sources/RespondCostBench"
        )
    ],
    swiftLanguageModes: [.v6]
)
