from failforge.cli import main

main()
