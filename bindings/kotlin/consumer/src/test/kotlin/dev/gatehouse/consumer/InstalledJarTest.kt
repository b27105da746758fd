package dev.gatehouse.consumer

import dev.gatehouse.GatehouseClient
import java.io.File
import java.util.jar.JarFile
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

/** The bindings under test are the installed package, not the source tree. */
class InstalledJarTest {
    @Test
    fun `the classes and the native library come from the installed jar`() {
        val location = File(GatehouseClient::class.java.protectionDomain.codeSource.location.toURI())
        assertTrue(location.isFile && location.name == "gatehouse-kotlin-0.1.0.jar") { "classes from $location" }
        assertTrue(location.path.contains("${File.separator}repository${File.separator}")) {
            "the jar comes from a Maven repository: $location"
        }
        JarFile(location).use { jar ->
            assertNotNull(jar.getJarEntry("linux-x86-64/libgatehouse_ffi.so")) { "the jar carries the native library" }
        }
        // Nothing points JNA at a folder: it can only find the library inside the jar.
        assertNull(System.getProperty("jna.library.path"))
    }
}
