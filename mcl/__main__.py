from mcl.cli import run_program

run_program()
