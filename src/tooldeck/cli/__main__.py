from tooldeck.cli.app import main

main()
