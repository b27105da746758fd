package dev.gatehouse

import java.time.Duration
import java.util.UUID
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.cancelAndJoin
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.mapNotNull
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import org.json.JSONObject
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows

/**
 * The pull streams and the `Flow`s of Streams.kt (`sessionUpdates`, `executionEvents`)
 * against a live `gatehouse serve` (one server for the class).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StreamsTest {
    private val server = GatehouseServer()

    @AfterAll
    fun stopServer() = server.close()

    private fun newProject(): String = UUID.randomUUID().toString()

    private fun configFor(projectId: String, apiKey: String = API_KEY) =
        ClientConfig(baseUrl = server.url, apiKey = apiKey, projectId = projectId, timeout = Duration.ofSeconds(10))

    private fun clientFor(projectId: String, apiKey: String = API_KEY) = GatehouseClient(configFor(projectId, apiKey))

    private fun gateId(answer: JSONObject): String = answer.getJSONArray("interaction_ids").getString(0)

    /** Counts the pull streams the flows open: proves they are cold. */
    private class CountingClient(config: ClientConfig) : GatehouseClient(config) {
        val sessionWatches = AtomicInteger()
        val eventWatches = AtomicInteger()

        override fun openSessionWatch(sessionId: String): SessionWatch {
            sessionWatches.incrementAndGet()
            return super.openSessionWatch(sessionId)
        }

        override fun openExecutionEvents(roomId: String, sessionId: String, after: Long?): ExecutionEventWatch {
            eventWatches.incrementAndGet()
            return super.openExecutionEvents(roomId, sessionId, after)
        }
    }

    private fun elapsedSince(startedNs: Long): Duration = Duration.ofNanos(System.nanoTime() - startedNs)

    @Test
    fun `a watch event carries the gate invokeTool opened`() = runBlocking {
        val session = UUID.randomUUID().toString()
        clientFor(newProject()).use { client ->
            var opened: InvokeOutcome? = null
            val event = withTimeout(30_000) {
                client.sessionUpdates(session)
                    .onEach { update ->
                        if (update == WatchUpdate.Connected && opened == null) {
                            opened = client.invokeTool("clean up", "Bash", """{"command":"rm -rf /tmp/cache"}""", sessionId = session)
                        }
                    }
                    .mapNotNull { (it as? WatchUpdate.Event)?.event as? WatchEvent.Interaction }
                    .first { it.status == InteractionStatus.Pending && it.interaction != null }
            }
            assertEquals(TurnStatus.PARKED, opened!!.status)
            val gate = event.interaction!!
            assertEquals(opened!!.interactionIds.single(), gate.id)
            val status: InteractionStatus = gate.status
            assertEquals(InteractionStatus.Pending, status)
            assertEquals("Bash", gate.request?.tool)
            assertEquals("rm -rf /tmp/cache", gate.request?.argsJson?.getString("command"))
            assertTrue(gate.parametersJson?.has("agent") == true, "parameters: ${gate.parameters}")
            val created: java.time.Instant = gate.createdAt!!
            assertTrue(Duration.between(created, java.time.Instant.now()).abs() < Duration.ofHours(1), "created $created")
        }
    }

    @Test
    fun `sessionUpdates sees Connected, then a gate opening`() = runBlocking {
        val project = newProject()
        val session = UUID.randomUUID().toString()
        clientFor(project).use { client ->
            val seen = mutableListOf<WatchUpdate>()
            var answer: JSONObject? = null
            val opened = withTimeout(30_000) {
                client.sessionUpdates(session)
                    .onEach { update ->
                        seen += update
                        // Connected: the watch is live, open a gate in its session.
                        if (update == WatchUpdate.Connected && answer == null) {
                            answer = withContext(Dispatchers.IO) { server.openGate(project, session) }
                        }
                    }
                    .mapNotNull { (it as? WatchUpdate.Event)?.event as? WatchEvent.Interaction }
                    .first { it.status == InteractionStatus.Pending }
            }
            assertEquals(WatchUpdate.Connected, seen.first(), "updates: $seen")
            assertEquals(session, opened.sessionId)
            val interactionId = opened.interactionId
            if (interactionId != null) assertEquals(gateId(answer!!), interactionId)
        }
    }

    @Test
    fun `cancelling a collector suspended in next() on a quiet session returns promptly and ends the watch`() = runBlocking {
        // Its own server: the connection count below is this test's alone.
        GatehouseServer().use { own ->
            GatehouseClient(ClientConfig(baseUrl = own.url, apiKey = API_KEY, projectId = newProject())).use { client ->
                val connected = CompletableDeferred<Unit>()
                val collector = launch(Dispatchers.Default) {
                    client.sessionUpdates(UUID.randomUUID().toString()).collect { update ->
                        if (update == WatchUpdate.Connected) connected.complete(Unit)
                    }
                }
                withTimeout(15_000) { connected.await() }
                delay(300) // nothing happens in this session: the collector waits in next()
                assertTrue(own.establishedConnections() >= 2, "the watch's connection") // both ends
                val started = System.nanoTime()
                collector.cancelAndJoin()
                val took = elapsedSince(started)
                assertTrue(collector.isCancelled)
                assertTrue(took < Duration.ofSeconds(2), "cancel took $took")
                // The client closed the connection and the server ended its watch: no
                // connection to the server is left, on either end.
                var left = own.establishedConnections()
                var polls = 0
                while (left != 0 && polls++ < 100) {
                    delay(100)
                    left = own.establishedConnections()
                }
                assertEquals(0, left, "connections left to the server after the cancel")
            }
        }
        clientFor(newProject()).use { client ->
            // withTimeout cancels the same way.
            val timedStart = System.nanoTime()
            val none = withTimeoutOrNull(500) { client.sessionUpdates(UUID.randomUUID().toString()).collect {} }
            assertNull(none)
            val timed = elapsedSince(timedStart)
            assertTrue(timed < Duration.ofSeconds(3), "withTimeout(500 ms) took $timed")

            // A terminal operator ends the collection too (the flow's finally cancels the watch).
            val firstOnly = withTimeout(15_000) { client.sessionUpdates(UUID.randomUUID().toString()).take(1).toList() }
            assertEquals(listOf<WatchUpdate>(WatchUpdate.Connected), firstOnly)
        }
    }

    @Test
    fun `the pull object's cancel ends a pending next() with null`() = runBlocking {
        clientFor(newProject()).use { client ->
            client.openSessionWatch(UUID.randomUUID().toString()).use { watch ->
                assertEquals(WatchUpdate.Connected, withTimeout(15_000) { watch.next() })
                val pending = async(Dispatchers.Default) {
                    // Skips the server's ready event, if any: then waits on a quiet session.
                    var update = watch.next()
                    while (update != null) update = watch.next()
                    update
                }
                delay(300)
                assertFalse(pending.isCompleted)
                val started = System.nanoTime()
                watch.cancel()
                assertNull(withTimeout(2_000) { pending.await() })
                assertTrue(elapsedSince(started) < Duration.ofSeconds(2))
                assertNull(watch.next()) // over for good
                watch.cancel() // twice is harmless
            }
        }
    }

    @Test
    fun `executionEvents yields the log in sequence order, ends with SessionReconciled and completes`() = runBlocking {
        val project = newProject()
        val answer = server.openGate(project)
        val execution = answer.getJSONObject("execution")
        val room = execution.getString("room_id")
        val session = execution.getString("session_id")
        clientFor(project).use { client ->
            val firstSeen = CompletableDeferred<ExecutionEvent>()
            val all = async {
                client.executionEvents(room, session).onEach { firstSeen.complete(it) }.toList()
            }
            assertEquals(ExecutionEventType.SessionOpened, withTimeout(15_000) { firstSeen.await() }.eventType)
            // The run is parked at the gate: the log is not complete, the flow waits.
            assertFalse(all.isCompleted)
            client.respondToInteraction(gateId(answer), true)
            val events = withTimeout(30_000) { all.await() } // completes by itself
            val sequences = events.map { it.sequence }
            assertEquals(sequences.sorted().distinct(), sequences, "not in increasing order: $sequences")
            assertEquals(ExecutionEventType.SessionReconciled, events.last().eventType, "events: $events")
            assertEquals(1, events.count { it.eventType == ExecutionEventType.SessionReconciled })

            // From after a sequence: the rest of the same log.
            val rest = withTimeout(30_000) { client.executionEvents(room, session, after = sequences.first()).toList() }
            assertEquals(events.drop(1), rest)
        }
    }

    @Test
    fun `the flows are cold - nothing opens until collected, failures are thrown from collect`() = runBlocking {
        val project = newProject()
        CountingClient(configFor(project)).use { client ->
            val updates = client.sessionUpdates(UUID.randomUUID().toString())
            val events = client.executionEvents("room-1", "es-${UUID.randomUUID()}")
            delay(200)
            assertEquals(0, client.sessionWatches.get())
            assertEquals(0, client.eventWatches.get())
            // Collected later, it works; each collection opens its own watch.
            assertEquals(WatchUpdate.Connected, withTimeout(15_000) { updates.first() })
            assertEquals(WatchUpdate.Connected, withTimeout(15_000) { updates.first() })
            assertEquals(2, client.sessionWatches.get())
            // An unknown execution session: a terminal failure, thrown from collect.
            assertThrows<GatehouseException.NotFound> { runBlocking { withTimeout(15_000) { events.toList() } } }
            assertEquals(1, client.eventWatches.get())
        }
        clientFor(project, apiKey = "wrong").use { client ->
            val updates = client.sessionUpdates(UUID.randomUUID().toString()) // nothing thrown here
            val error = assertThrows<GatehouseException.Unauthorized> {
                runBlocking { withTimeout(15_000) { updates.collect {} } }
            }
            assertFalse(error.retryable)
        }
    }

    @Test
    fun `records and unit variants print readably`() = runBlocking {
        assertEquals("Running", LifecycleState.Running.toString())
        assertEquals("Connected", WatchUpdate.Connected.toString())
        assertEquals("Pending", InteractionStatus.Pending.toString())
        val project = newProject()
        val answer = server.openGate(project)
        clientFor(project).use { client ->
            val gate = client.listPendingInteractions(answer.getString("session_id")).single()
            val text = gate.toString()
            assertTrue(text.startsWith("Interaction("), text)
            assertTrue(text.contains("id=${gate.id}"), text)
            assertTrue(text.contains("status=Pending"), text)
        }
    }
}
