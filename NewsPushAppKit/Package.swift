// swift-tools-version:5.9
// The app side of `newspush api`, a package of its own so that an app that adds it builds
// Foundation's code and nothing of the server (newspush's own Package.swift depends on it by
// path, and its tests drive it against the built back-end). docs/api.md says how an app adds it.
import PackageDescription

let package = Package(
    name: "NewsPushAppKit",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .library(name: "NewsPushAppKit", targets: ["NewsPushAppKit"])
    ],
    targets: [
        .target(name: "NewsPushAppKit")
    ]
)
