"""A first script: list the tools of your MCP servers, call one, handle an error."""

import asyncio

import albedo


async def main() -> None:
    async with albedo.connect() as mcp:  # finds (or starts) the daemon of $ALBEDO_HOME, opens a session
        for op in await mcp.tools():
            print(f"{op.server}/{op.tool}: {op.description[:60]}")

        result = await mcp.call("everything/echo", message="hello")  # or: await mcp.everything.echo(message="hello")
        print(result.text)  # a tool that reports an error sets result.isError: it does not raise

        try:
            await mcp.call("everything/no-such-tool")
        except albedo.Error as e:
            print(e.code, e.outcome)  # ALBEDO_NOT_FOUND not_run: nothing ran, safe to fix and try again


asyncio.run(main())
