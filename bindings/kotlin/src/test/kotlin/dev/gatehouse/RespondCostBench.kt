package dev.gatehouse

import java.io.File
import java.lang.management.ManagementFactory
import kotlinx.coroutines.runBlocking
import org.json.JSONArray
import org.json.JSONObject

/**
 * One respond through the Kotlin binding, timed per call: the Kotlin side of
 * BENCHMARKS.md's binding row. Not a test (no JUnit annotation: surefire never runs it).
 *
 * Started by `gatehouse-bench live` through Maven (`exec:java`, test classpath) with one
 * argument, a JSON file `{"base_url", "api_key", "project_id", "ids": [...], "warmup": n}`:
 * each id is a fresh pending gate, answered once with `respondToInteraction(id, true)`
 * from one thread (`runBlocking`, as an app's coroutine would await it). Prints
 * `{"samples_ns": [...], "process_cpu_ns_per_call": n, "jvm": "..."}` on stdout, the
 * first `warmup` calls (JIT warm-up) left out; the CPU figure covers the whole JVM, the
 * binding's tokio threads included.
 */
fun main(args: Array<String>) {
    val config = JSONObject(File(args.single()).readText())
    val client = GatehouseClient(
        ClientConfig(
            baseUrl = config.getString("base_url"),
            apiKey = config.getString("api_key"),
            projectId = config.getString("project_id"),
            timeout = java.time.Duration.ofSeconds(30),
        ),
    )
    val ids = config.getJSONArray("ids")
    val warmup = config.optInt("warmup", 0)
    val os = ManagementFactory.getOperatingSystemMXBean() as? com.sun.management.OperatingSystemMXBean
    val samples = JSONArray()
    var cpuNs = 0L
    for (i in 0 until ids.length()) {
        val id = ids.getString(i)
        val cpuStarted = os?.processCpuTime ?: 0L
        val started = System.nanoTime()
        val row = runBlocking { client.respondToInteraction(id, true) }
        val elapsed = System.nanoTime() - started
        val cpu = (os?.processCpuTime ?: 0L) - cpuStarted
        check(row.id == id) { "respond answered ${row.id}, not $id" }
        if (i >= warmup) {
            samples.put(elapsed)
            cpuNs += cpu
        }
    }
    val measured = (ids.length() - warmup).coerceAtLeast(1)
    val out = JSONObject()
        .put("samples_ns", samples)
        .put("process_cpu_ns_per_call", if (os != null) cpuNs.toDouble() / measured else JSONObject.NULL)
        .put("jvm", "${System.getProperty("java.vm.name")} ${System.getProperty("java.version")}")
    println(out.toString())
}
