package dev.gatehouse

import java.net.ServerSocket
import java.time.Duration
import java.util.UUID
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows

/**
 * One inbox across hosts (`GatehouseInbox`): two live servers and one that is down, read
 * page by page; the down host is reported with its typed failure, not thrown.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class InboxTest {
    private val team = GatehouseServer()
    private val home = GatehouseServer()

    @AfterAll
    fun stopServers() {
        team.close()
        home.close()
    }

    private fun clientAt(url: String, projectId: String) =
        GatehouseClient(ClientConfig(baseUrl = url, apiKey = API_KEY, projectId = projectId, timeout = Duration.ofSeconds(10)))

    /** A URL nothing listens on: a port bound, then let go. */
    private fun deadUrl(): String = ServerSocket(0).use { "http://127.0.0.1:${it.localPort}" }

    private suspend fun openGates(client: GatehouseClient, count: Int): Set<String> =
        (0 until count).flatMap { client.invokeTool("step $it", "Bash", """{"command":"ls"}""").interactionIds }.toSet()

    @Test
    fun `two servers and one down read as one inbox`() = runBlocking {
        val project = UUID.randomUUID().toString()
        val teamClient = clientAt(team.url, project)
        val homeClient = clientAt(home.url, project)
        val inbox = GatehouseInbox()
        inbox.addHost("team", teamClient)
        inbox.addHost("home", homeClient)
        inbox.addHost("down", clientAt(deadUrl(), project))
        assertThrows<GatehouseException.Config> { inbox.addHost("team", teamClient) }
        assertEquals(listOf("team", "home", "down"), inbox.hostNames())

        val teamIds = openGates(teamClient, 3)
        val homeIds = openGates(homeClient, 2)
        val seen = mutableMapOf("team" to mutableSetOf<String>(), "home" to mutableSetOf())
        var cursor: String? = null
        var finished = false
        withTimeout(60_000) {
            repeat(5) {
                if (finished) return@repeat
                val page = inbox.pending(cursor, 2u)
                val down = page.hosts[2].state
                assertTrue(down is InboxHostState.Failed, "the down host was reported $down")
                down as InboxHostState.Failed
                assertEquals(GatehouseErrorKind.TRANSPORT, down.kind)
                for (gate in page.gates) {
                    assertTrue(seen.getValue(gate.host).add(gate.gate.id), "a gate came twice")
                }
                val times = page.gates.map { it.gate.createdAt }
                assertEquals(times.sortedByDescending { it }, times)
                assertNotNull(page.nextCursor, "a failed host keeps the inbox open")
                cursor = page.nextCursor
                finished = page.hosts.take(2).all { it.state == InboxHostState.Done }
            }
        }
        assertTrue(finished, "the live hosts were never read to their end")
        assertEquals(mapOf("team" to teamIds, "home" to homeIds), seen)
    }

    @Test
    fun `a cursor that is not the inbox's is a Config error`() = runBlocking {
        val inbox = GatehouseInbox()
        inbox.addHost("team", clientAt(team.url, UUID.randomUUID().toString()))
        assertThrows<GatehouseException.Config> { runBlocking { inbox.pending("not a cursor", 10u) } }
        assertThrows<GatehouseException.Config> { runBlocking { inbox.pending(null, 0u) } }
        Unit
    }
}
