// swift-tools-version:6.0
// The Gatehouse Swift package: `import Gatehouse`. SwiftPM reads a package only from a
// repository's root, hence this file here; the sources are under bindings/swift.
//
// Linux (and a local macOS build): the package links the native library this repository
// builds. Build it once before `swift build` / `swift test`:
//
//     cargo xtask native-lib
//
// (that is `cargo rustc -p gatehouse-ffi --lib --profile release --crate-type cdylib`, the
// one build the Python wheel and the Kotlin jar take too). The library is found in cargo's
// target directory as cargo resolves it ($GATEHOUSE_FFI_LIB_DIR if set, else
// `cargo metadata`'s target_directory + /release). When it is not there, the manifest says
// so in one line (SwiftPM shows it as a warning) before the link fails.
// The linker flags that point there are unsafe flags: a package that depends on this one
// by URL cannot use them, so on Linux depend on a local checkout (`.package(path:)`).
//
// Apple platforms (iOS, macOS apps): set GATEHOUSE_XCFRAMEWORK=1 and build the
// XCFramework first with bindings/swift/build-xcframework.sh (needs Xcode; not run on the
// Linux machines this project is tested on). The C module then comes from the
// XCFramework as a binary target.
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
let environment = ProcessInfo.processInfo.environment

/// Cargo's target directory, as `cargo metadata` reports it (CARGO_TARGET_DIR,
/// build.target-dir in a cargo config, or target/ in the workspace).
func cargoTargetDirectory() -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"]
    process.currentDirectoryURL = URL(fileURLWithPath: root)
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    do {
        try process.run()
    } catch {
        return nil
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
        let directory = object["target_directory"] as? String
    else { return nil }
    return directory
}

let useXCFramework = environment["GATEHOUSE_XCFRAMEWORK"] == "1"
let libraryDirectory =
    environment["GATEHOUSE_FFI_LIB_DIR"]
    ?? (cargoTargetDirectory() ?? environment["CARGO_TARGET_DIR"] ?? "\(root)/target") + "/release"

// Without the library the link fails with a wall of `undefined reference` lines that never
// name it: say what to build instead, once, where SwiftPM shows manifest output.
let libraryFiles = ["libgatehouse_ffi.so", "libgatehouse_ffi.dylib"].map { "\(libraryDirectory)/\($0)" }
if !useXCFramework && !libraryFiles.contains(where: { FileManager.default.fileExists(atPath: $0) }) {
    print(
        "no native library in \(libraryDirectory): build it with `cargo xtask native-lib` "
            + "(in \(root)), then build this package again")
}

let ffiTarget: Target =
    useXCFramework
    ? .binaryTarget(name: "gatehouse_ffiFFI", path: "bindings/swift/build/GatehouseFFI.xcframework")
    : .systemLibrary(name: "gatehouse_ffiFFI", path: "bindings/swift/Sources/gatehouse_ffiFFI")

let linkNativeLibrary: [LinkerSetting] =
    useXCFramework
    ? []
    : [
        .linkedLibrary("gatehouse_ffi"),
        .unsafeFlags(["-L", libraryDirectory, "-Xlinker", "-rpath", "-Xlinker", libraryDirectory]),
    ]

let package = Package(
    name: "Gatehouse",
    platforms: [.macOS(.v12), .iOS(.v15)],
    products: [
        .library(name: "Gatehouse", targets: ["Gatehouse"])
    ],
    targets: [
        ffiTarget,
        .target(
            name: "Gatehouse",
            dependencies: ["gatehouse_ffiFFI"],
            path: "bindings/swift/Sources/Gatehouse",
            linkerSettings: linkNativeLibrary
        ),
        .testTarget(
            name: "GatehouseTests",
            dependencies: ["Gatehouse"],
            path: "bindings/swift/Tests/GatehouseTests",
            linkerSettings: linkNativeLibrary
        ),
    ],
    swiftLanguageModes: [.v6]
)
